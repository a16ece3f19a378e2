print("xcallback: not yet")
