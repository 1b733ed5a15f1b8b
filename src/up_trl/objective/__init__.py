"""up_trl.objective."""
