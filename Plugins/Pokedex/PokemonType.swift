import XCallbackPluginKit

/// The 18 standard types: an enumeration parameter (`type=water`).
enum PokemonType: String, CaseIterable, ParameterValue, Sendable {
    case normal, fire, water, electric, grass, ice, fighting, poison, ground
    case flying, psychic, bug, rock, ghost, dragon, dark, steel, fairy
}
