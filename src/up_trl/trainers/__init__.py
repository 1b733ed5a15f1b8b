"""up_trl.trainers."""
