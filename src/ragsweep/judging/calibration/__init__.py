"""How far to trust a judge: labelled claims, its agreement with them (`ragsweep calibrate`), which judged claims
people should label, and their labels read back."""
