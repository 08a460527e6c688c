package proxy

import (
	"bytes"
	"encoding/json"
	"mime"

	"google.golang.org/protobuf/encoding/protowire"
	"sigs.k8s.io/yaml"
)

// generatesName reports whether a create's body asks the server to make up
// the object's name (metadata.generateName), so that sending it again would
// create a second object. The body is read in its encoding, JSON, YAML or
// Kubernetes protobuf (client-go's typed clients send built-in kinds as
// protobuf); a body it cannot read counts as generating its name.
func generatesName(body []byte, contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	var obj struct {
		Metadata struct {
			GenerateName string `json:"generateName"`
		} `json:"metadata"`
	}
	switch mt {
	case "application/json", "":
		if json.Unmarshal(body, &obj) != nil {
			return true
		}
	case "application/yaml":
		if yaml.Unmarshal(body, &obj) != nil {
			return true
		}
	case "application/vnd.kubernetes.protobuf":
		name, ok := protobufGenerateName(body)
		return !ok || name != ""
	default:
		return true
	}
	return obj.Metadata.GenerateName != ""
}

// protobufMagic starts every Kubernetes protobuf body, followed by a
// runtime.Unknown whose raw field holds the object.
var protobufMagic = []byte("k8s\x00")

// protobufGenerateName reads metadata.generateName from a Kubernetes
// protobuf body: runtime.Unknown field 2 (raw) is the object, whose field 1
// is its ObjectMeta (in every built-in kind), whose field 2 is generateName.
func protobufGenerateName(body []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return "", false
	}
	raw, ok := protobufField(rest, 2)
	if !ok {
		return "", false
	}
	meta, ok := protobufField(raw, 1)
	if !ok {
		return "", true // no metadata: no generateName
	}
	name, ok := protobufField(meta, 2)
	if !ok {
		return "", true
	}
	return string(name), true
}

// protobufField returns the last length-delimited field num of a protobuf
// message (the last one wins, as in decoding); ok is false when the message
// does not parse or has no such field.
func protobufField(msg []byte, num protowire.Number) (value []byte, ok bool) {
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return nil, false
		}
		msg = msg[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(msg)
			if l < 0 {
				return nil, false
			}
			value, ok = v, true
			msg = msg[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return nil, false
		}
		msg = msg[l:]
	}
	return value, ok
}
