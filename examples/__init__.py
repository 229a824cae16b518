"""Example apps. Run from the repository root so ``examples.<name>:app`` imports."""
