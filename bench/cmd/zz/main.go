package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"

	"github.com/sluice-go/ratelimit/bench/e2e"
)

func main() {
	for _, name := range []string{"http/local/header/allow/ours", "http/local/header/allow/httprate", "http/local/header/allow/none"} {
		v, err := e2e.ParseVariant(name)
		if err != nil {
			panic(err)
		}
		h, _, err := v.Handler(nil)
		if err != nil {
			panic(err)
		}
		srv := httptest.NewServer(h)
		req, _ := http.NewRequest("GET", srv.URL+"/items/1", nil)
		req.Header.Set("X-User", "u1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		b, _ := httputil.DumpResponse(resp, true)
		fmt.Printf("== %s (%d bytes)\n%s\n", name, len(b), b)
		srv.Close()
	}
}
