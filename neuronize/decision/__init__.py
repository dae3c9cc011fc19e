"""Decision: which of the fixes the rules propose are applied (target, role, dispatch, evidence,
suppressions, import safety, edit groups, guards, the baseline), in one place."""
