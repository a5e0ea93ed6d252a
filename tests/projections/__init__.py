"""Tests of hf_dumpembed/projections/ (hf_dumpembed/projections.py for cli), one file per module."""
