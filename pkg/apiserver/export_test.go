package apiserver

import (
	"net/http"
	"time"
)

// SetIdleTimeout shortens how long an idle keep-alive connection stays
// open, for tests.
func SetIdleTimeout(o *Options, d time.Duration) { o.Serving.idleTimeout = d }

// HTTPServer is the server's http.Server, for tests to read its settings.
func HTTPServer(s *Server) *http.Server { return s.http }
