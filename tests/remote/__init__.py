"""Tests of hf_dumpembed/remote/ (hf_dumpembed/remote.py for cli), one file per module."""
