// Placeholder until the first real file lands.
