"""The projection methods: one `base.ProjectionMethod` subclass per method, found by `..registry`."""
