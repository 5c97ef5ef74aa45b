"""Zhu et al.'s confidence training (appendix B): self-consistency targets, then GRPO + LoRA stages."""
