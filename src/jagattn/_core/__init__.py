"""Op-agnostic machinery: dispatch, packed-layout validation, torch.library helpers, Triton utils.

Nothing here imports a family.
"""
