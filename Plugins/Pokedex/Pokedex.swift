import XCallbackPluginKit

/// The Pokedex sample plug-in (SPEC section 5): typed pattern routes in the
/// style of Crossroad's `pokedex://pokemons/:pokedexID`.
let pokedexPlugin = Plugin(
    name: "pokedex", version: "1.0.0",
    summary: "Looks up Pokémon by number or by type"
) { routes in
    // pokedex://pokemons/25 → name=Pikachu
    routes.pattern("pokedex://pokemons/:pokedexID") { request in
        let id = try request.argument("pokedexID", as: Int.self)
        guard let pokemon = pokedex.first(where: { $0.id == id }) else { throw NotFound(id: id) }
        return .success(["name": pokemon.name])
    }
    // pokedex://pokemons?type=water&types=ice → names=Dewgong,Cloyster,Lapras
    routes.pattern("pokedex://pokemons") { request in
        let type = try request.optionalParameter("type", as: PokemonType.self)
        let types = try request.list("types", of: PokemonType.self)
        let wanted = Set(types + (type.map { [$0] } ?? []))
        let names = pokedex.filter { wanted.isSubset(of: $0.types) }.map(\.name)
        return .success(["names": names.joined(separator: ",")])
    }
}

struct NotFound: PluginError {
    let id: Int
    var errorCode: String { "NotFound" }
    var errorMessage: String { "no Pokémon has number \(id)" }
    var errorDomain: String? { "pokedex" }
}

@_cdecl("xcallback_plugin_descriptor")
public func pokedexDescriptor() -> UnsafeRawPointer { pokedexPlugin.descriptor }

@_cdecl("xcallback_plugin_register")
public func pokedexRegister(_ api: UnsafeRawPointer?, _ plugin: OpaquePointer?) -> Int32 {
    pokedexPlugin.register(api: api, plugin: plugin)
}
