"""Tests of hf_dumpembed/cli/ (hf_dumpembed/cli.py for cli), one file per module."""
