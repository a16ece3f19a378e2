// Placeholder until the plug-in lands.
