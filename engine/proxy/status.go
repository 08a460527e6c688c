package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeStatus answers with a metav1.Status JSON body, the error format every
// Kubernetes client understands. retryAfter > 0 sets Retry-After, which makes
// client-go retry the request by itself.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string, retryAfter int) {
	body := statusBody(code, reason, message, retryAfter)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, private")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func statusBody(code int, reason metav1.StatusReason, message string, retryAfter int) []byte {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Code:     int32(code),
	}
	if retryAfter > 0 {
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(retryAfter)}
	}
	body, _ := json.Marshal(st)
	return append(body, '\n')
}
