package cacher

// Ready reports whether the cache has been filled from the backend once
// and serves reads; /readyz waits for every cache (informer-sync).
func (c *Cache) Ready() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ready
}
