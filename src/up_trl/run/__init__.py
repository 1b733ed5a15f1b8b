"""What a run writes and watches in its output folder (`job`, `preflight`, `folder`, `lock`, `checkpoint_complete`,
`ending`, `callbacks`, `card`, `plots`), and the opt-in parts beyond UP (`parts`: their public names and one-line use).
"""
