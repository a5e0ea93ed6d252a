"""The numbers behind every projection, in the order a fit computes them: the corpus statistics, their spectrum and
its tempered scale, SpecTemp's γ(k) curve, the pseudo-queries and auto mode's choice per k, EmbedFilter's basis, and
the numpy reference maps. numpy and torch only: no model, no options, no files (`methods/` turns these into maps)."""
