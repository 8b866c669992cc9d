module github.com/sluice-go/ratelimit/examples/chi

go 1.26.0

replace github.com/sluice-go/ratelimit => ../..

require (
	github.com/go-chi/chi/v5 v5.5.0
	github.com/sluice-go/ratelimit v0.1.0
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
