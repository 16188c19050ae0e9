"""Renderers turn a :class:`gpudoctor.check.Report` into text; they never probe or judge."""
