"""Tests of hf_dumpembed/publishing/ (hf_dumpembed/publishing.py for cli), one file per module."""
