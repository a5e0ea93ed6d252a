"""Tests of hf_dumpembed/model/ (hf_dumpembed/model.py for cli), one file per module."""
