"""Commands over saved `check --json` reports: compare two, aggregate a fleet."""
