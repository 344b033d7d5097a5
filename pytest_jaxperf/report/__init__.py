"""Rendering verdicts: summary, wording, terminal, markdown, HTML, JUnit, exports."""
