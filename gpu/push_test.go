package gpu

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// pushBlock finds a shader's `layout(push_constant) uniform Push { … } pc;`.
var pushBlock = regexp.MustCompile(`(?s)layout\(push_constant\)\s*uniform\s+Push\s*\{(.*?)\}\s*pc;`)

// Each kernel's Go push-constant struct matches its shader's block field for
// field: the same names (ignoring case), types and order, so the offsets
// (4 bytes each) agree.
func TestPushLayouts(t *testing.T) {
	for k, v := range pushTypes {
		src := strings.TrimSuffix(strings.TrimSuffix(string(k), "_dot"), "_subgroup") + ".comp"
		b, err := os.ReadFile("../shaders/" + src)
		if err != nil {
			t.Fatal(err)
		}
		m := pushBlock.FindSubmatch(b)
		if m == nil {
			t.Errorf("%s: no push_constant block", src)
			continue
		}
		var fields []string
		for _, decl := range strings.Split(string(m[1]), ";") {
			if decl = strings.TrimSpace(decl); decl != "" {
				fields = append(fields, decl)
			}
		}
		typ := reflect.TypeOf(v)
		if len(fields) != typ.NumField() {
			t.Errorf("%s: %d push constants, %T has %d", src, len(fields), v, typ.NumField())
			continue
		}
		for i, decl := range fields {
			parts := strings.Fields(decl)
			f := typ.Field(i)
			want := map[reflect.Kind]string{reflect.Uint32: "uint", reflect.Float32: "float"}[f.Type.Kind()]
			if len(parts) != 2 || parts[0] != want || !strings.EqualFold(parts[1], f.Name) {
				t.Errorf("%s: push constant %d is %q, %T has %s %s", src, i, decl, v, want, f.Name)
			}
		}
		if got := len(pushBytes(v)); got != pushSize(k) {
			t.Errorf("%s: %d bytes encoded, size %d", k, got, pushSize(k))
		}
	}
}
