package engine

// CachedPaths is how many of Path's answers c keeps.
func CachedPaths(c *Converter) int64 { return c.paths.n.Load() }
