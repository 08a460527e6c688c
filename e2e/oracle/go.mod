module github.com/mvpctl/mvpctl/e2e/oracle

go 1.26.8

// The oldest release module's versions: each release module's go.mod
// decides the versions it builds with (MVS picks the higher of the two, and
// its replaces pin every k8s.io staging module).
require k8s.io/apimachinery v0.15.12

require (
	github.com/gogo/protobuf v0.0.0-20171007142547-342cbe0a0415 // indirect
	github.com/google/gofuzz v0.0.0-20170612174753-24818f796faf // indirect
	github.com/json-iterator/go v0.0.0-20180701071628-ab8a2e0c74be // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	golang.org/x/net v0.0.0-20190812203447-cdfb69ac37fc // indirect
	golang.org/x/text v0.3.1-0.20181227161524-e6919f6577db // indirect
	gopkg.in/inf.v0 v0.9.0 // indirect
	gopkg.in/yaml.v2 v2.2.8 // indirect
	k8s.io/klog v0.3.1 // indirect
	sigs.k8s.io/yaml v1.1.0 // indirect
)
