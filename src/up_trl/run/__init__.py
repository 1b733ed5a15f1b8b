"""What a run writes and watches in its output folder, and the opt-in parts beyond UP (`parts`: names and use)."""
