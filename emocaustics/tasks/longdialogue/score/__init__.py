"""Scoring: the spec-exact rules (`sextuple`, `chains`), in process (`engine`) or through Ray Data (`plan`), their
tables (`tables`), the reference-compat mode (`ref*`), prediction files (`predictions`) and calibration predictors."""
