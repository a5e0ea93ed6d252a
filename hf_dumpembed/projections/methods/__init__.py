"""One fitter per projection method; `hf_dumpembed.projections.registry` binds each method name to its fitter."""
