"""up_trl.run."""
