module github.com/sluice-go/ratelimit/rules/rulesyaml

go 1.26.0

replace github.com/sluice-go/ratelimit => ../..

require (
	github.com/sluice-go/ratelimit v0.1.0
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.6
)
