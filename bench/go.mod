module github.com/sluice-go/ratelimit/bench

go 1.26.0

require (
	github.com/sethvargo/go-limiter v0.7.1
	github.com/sluice-go/ratelimit v0.0.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/time v0.16.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace github.com/sluice-go/ratelimit => ../
