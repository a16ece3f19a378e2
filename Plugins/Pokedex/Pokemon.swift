/// One Pokédex entry.
struct Pokemon: Sendable {
    let id: Int
    let name: String
    let types: Set<PokemonType>

    init(_ id: Int, _ name: String, _ types: PokemonType...) {
        self.id = id
        self.name = name
        self.types = Set(types)
    }
}

/// The first 151, enough to answer every route of the sample.
let pokedex: [Pokemon] = [
    Pokemon(1, "Bulbasaur", .grass, .poison), Pokemon(2, "Ivysaur", .grass, .poison),
    Pokemon(3, "Venusaur", .grass, .poison), Pokemon(4, "Charmander", .fire),
    Pokemon(5, "Charmeleon", .fire), Pokemon(6, "Charizard", .fire, .flying),
    Pokemon(7, "Squirtle", .water), Pokemon(8, "Wartortle", .water), Pokemon(9, "Blastoise", .water),
    Pokemon(10, "Caterpie", .bug), Pokemon(11, "Metapod", .bug), Pokemon(12, "Butterfree", .bug, .flying),
    Pokemon(13, "Weedle", .bug, .poison), Pokemon(14, "Kakuna", .bug, .poison), Pokemon(15, "Beedrill", .bug, .poison),
    Pokemon(16, "Pidgey", .normal, .flying), Pokemon(17, "Pidgeotto", .normal, .flying),
    Pokemon(18, "Pidgeot", .normal, .flying), Pokemon(19, "Rattata", .normal), Pokemon(20, "Raticate", .normal),
    Pokemon(21, "Spearow", .normal, .flying), Pokemon(22, "Fearow", .normal, .flying),
    Pokemon(23, "Ekans", .poison), Pokemon(24, "Arbok", .poison), Pokemon(25, "Pikachu", .electric),
    Pokemon(26, "Raichu", .electric), Pokemon(27, "Sandshrew", .ground), Pokemon(28, "Sandslash", .ground),
    Pokemon(29, "Nidoran♀", .poison), Pokemon(30, "Nidorina", .poison), Pokemon(31, "Nidoqueen", .poison, .ground),
    Pokemon(32, "Nidoran♂", .poison), Pokemon(33, "Nidorino", .poison), Pokemon(34, "Nidoking", .poison, .ground),
    Pokemon(35, "Clefairy", .fairy), Pokemon(36, "Clefable", .fairy), Pokemon(37, "Vulpix", .fire),
    Pokemon(38, "Ninetales", .fire), Pokemon(39, "Jigglypuff", .normal, .fairy),
    Pokemon(40, "Wigglytuff", .normal, .fairy), Pokemon(41, "Zubat", .poison, .flying),
    Pokemon(42, "Golbat", .poison, .flying), Pokemon(43, "Oddish", .grass, .poison),
    Pokemon(44, "Gloom", .grass, .poison), Pokemon(45, "Vileplume", .grass, .poison),
    Pokemon(46, "Paras", .bug, .grass), Pokemon(47, "Parasect", .bug, .grass),
    Pokemon(48, "Venonat", .bug, .poison), Pokemon(49, "Venomoth", .bug, .poison),
    Pokemon(50, "Diglett", .ground), Pokemon(51, "Dugtrio", .ground), Pokemon(52, "Meowth", .normal),
    Pokemon(53, "Persian", .normal), Pokemon(54, "Psyduck", .water), Pokemon(55, "Golduck", .water),
    Pokemon(56, "Mankey", .fighting), Pokemon(57, "Primeape", .fighting), Pokemon(58, "Growlithe", .fire),
    Pokemon(59, "Arcanine", .fire), Pokemon(60, "Poliwag", .water), Pokemon(61, "Poliwhirl", .water),
    Pokemon(62, "Poliwrath", .water, .fighting), Pokemon(63, "Abra", .psychic), Pokemon(64, "Kadabra", .psychic),
    Pokemon(65, "Alakazam", .psychic), Pokemon(66, "Machop", .fighting), Pokemon(67, "Machoke", .fighting),
    Pokemon(68, "Machamp", .fighting), Pokemon(69, "Bellsprout", .grass, .poison),
    Pokemon(70, "Weepinbell", .grass, .poison), Pokemon(71, "Victreebel", .grass, .poison),
    Pokemon(72, "Tentacool", .water, .poison), Pokemon(73, "Tentacruel", .water, .poison),
    Pokemon(74, "Geodude", .rock, .ground), Pokemon(75, "Graveler", .rock, .ground),
    Pokemon(76, "Golem", .rock, .ground), Pokemon(77, "Ponyta", .fire), Pokemon(78, "Rapidash", .fire),
    Pokemon(79, "Slowpoke", .water, .psychic), Pokemon(80, "Slowbro", .water, .psychic),
    Pokemon(81, "Magnemite", .electric, .steel), Pokemon(82, "Magneton", .electric, .steel),
    Pokemon(83, "Farfetch'd", .normal, .flying), Pokemon(84, "Doduo", .normal, .flying),
    Pokemon(85, "Dodrio", .normal, .flying), Pokemon(86, "Seel", .water), Pokemon(87, "Dewgong", .water, .ice),
    Pokemon(88, "Grimer", .poison), Pokemon(89, "Muk", .poison), Pokemon(90, "Shellder", .water),
    Pokemon(91, "Cloyster", .water, .ice), Pokemon(92, "Gastly", .ghost, .poison),
    Pokemon(93, "Haunter", .ghost, .poison), Pokemon(94, "Gengar", .ghost, .poison),
    Pokemon(95, "Onix", .rock, .ground), Pokemon(96, "Drowzee", .psychic), Pokemon(97, "Hypno", .psychic),
    Pokemon(98, "Krabby", .water), Pokemon(99, "Kingler", .water), Pokemon(100, "Voltorb", .electric),
    Pokemon(101, "Electrode", .electric), Pokemon(102, "Exeggcute", .grass, .psychic),
    Pokemon(103, "Exeggutor", .grass, .psychic), Pokemon(104, "Cubone", .ground), Pokemon(105, "Marowak", .ground),
    Pokemon(106, "Hitmonlee", .fighting), Pokemon(107, "Hitmonchan", .fighting), Pokemon(108, "Lickitung", .normal),
    Pokemon(109, "Koffing", .poison), Pokemon(110, "Weezing", .poison), Pokemon(111, "Rhyhorn", .ground, .rock),
    Pokemon(112, "Rhydon", .ground, .rock), Pokemon(113, "Chansey", .normal), Pokemon(114, "Tangela", .grass),
    Pokemon(115, "Kangaskhan", .normal), Pokemon(116, "Horsea", .water), Pokemon(117, "Seadra", .water),
    Pokemon(118, "Goldeen", .water), Pokemon(119, "Seaking", .water), Pokemon(120, "Staryu", .water),
    Pokemon(121, "Starmie", .water, .psychic), Pokemon(122, "Mr. Mime", .psychic, .fairy),
    Pokemon(123, "Scyther", .bug, .flying), Pokemon(124, "Jynx", .ice, .psychic), Pokemon(125, "Electabuzz", .electric),
    Pokemon(126, "Magmar", .fire), Pokemon(127, "Pinsir", .bug), Pokemon(128, "Tauros", .normal),
    Pokemon(129, "Magikarp", .water), Pokemon(130, "Gyarados", .water, .flying), Pokemon(131, "Lapras", .water, .ice),
    Pokemon(132, "Ditto", .normal), Pokemon(133, "Eevee", .normal), Pokemon(134, "Vaporeon", .water),
    Pokemon(135, "Jolteon", .electric), Pokemon(136, "Flareon", .fire), Pokemon(137, "Porygon", .normal),
    Pokemon(138, "Omanyte", .rock, .water), Pokemon(139, "Omastar", .rock, .water), Pokemon(140, "Kabuto", .rock, .water),
    Pokemon(141, "Kabutops", .rock, .water), Pokemon(142, "Aerodactyl", .rock, .flying), Pokemon(143, "Snorlax", .normal),
    Pokemon(144, "Articuno", .ice, .flying), Pokemon(145, "Zapdos", .electric, .flying),
    Pokemon(146, "Moltres", .fire, .flying), Pokemon(147, "Dratini", .dragon), Pokemon(148, "Dragonair", .dragon),
    Pokemon(149, "Dragonite", .dragon, .flying), Pokemon(150, "Mewtwo", .psychic), Pokemon(151, "Mew", .psychic),
]
