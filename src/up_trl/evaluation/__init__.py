"""up_trl.evaluation."""
