// Placeholder until the first real test lands.
