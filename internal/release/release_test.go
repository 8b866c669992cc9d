//go:build unix

package release

import (
	"archive/zip"
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository's root directory, two levels above this package.
const root = "../.."

// modulePath is the root module's path; a nested module's path is it, a slash and its folder.
const modulePath = "github.com/sluice-go/ratelimit"

// published lists the folders of the modules users get (the root is ""), and a package of
// each that the user's program imports.
var published = []struct{ dir, pkg string }{
	{"", ""},
	{"prommetrics", "prommetrics"},
	{"rules/rulesyaml", "rules/rulesyaml"},
	{"rls", "rls"},
	{"valkeyclient", "valkeyclient"},
}

// The root module's packages a user's program imports beside the nested modules' (which
// import most of the others: rls the Redis backend, gRPC and the fallback).
var rootPackages = []string{"local", "httpmw", "ginmw"}

// A nested module requires the kit's modules at one version, the release's: the published
// modules require it of each other, and the unreleased ones (examples, bench, faults) too.
func TestNestedModulesRequireTheRelease(t *testing.T) {
	version := releaseVersion(t)
	mods, err := filepath.Glob(filepath.Join(root, "*", "go.mod"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(root, "*", "*", "go.mod"))
	require.NoError(t, err)
	mods = append(mods, more...)
	require.NotEmpty(t, mods)
	req := regexp.MustCompile(`(?m)^\s*(?:require\s+)?(` + regexp.QuoteMeta(modulePath) + `(?:/\S+)?) (v\S+)`)
	for _, m := range mods {
		if strings.Contains(m, "testdata") {
			continue
		}
		data, err := os.ReadFile(m)
		require.NoError(t, err)
		for _, sub := range req.FindAllStringSubmatch(string(data), -1) {
			assert.Equal(t, version, sub[2], "%s requires %s", m, sub[1])
		}
	}
}

// The test a release must pass: a module proxy on the file system serves every published
// module at the release version, built from the work tree as git would archive it; in an
// empty module, go get takes each at that version and go build compiles a program that
// imports them all. A nested module that required a version no tag gives, or depended on
// its replace, fails here.
func TestModulesResolveFromAProxy(t *testing.T) {
	version := releaseVersion(t)
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	proxy := t.TempDir()
	for _, m := range published {
		writeModule(t, proxy, m.dir, version)
	}

	user := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(user, "go.mod"), []byte("module example.com/user\n\ngo 1.26.0\n"), 0o644))
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, p := range rootPackages {
		fmt.Fprintf(&src, "\t_ %q\n", modulePath+"/"+p)
	}
	for _, m := range published {
		fmt.Fprintf(&src, "\t_ %q\n", strings.TrimSuffix(modulePath+"/"+m.pkg, "/"))
	}
	src.WriteString(")\n\nfunc main() {}\n")
	require.NoError(t, os.WriteFile(filepath.Join(user, "main.go"), []byte(src.String()), 0o644))

	// The user's module cache is the machine's, so that the third-party packages compiled
	// by the other tests are not compiled again; the kit's release versions, which exist only
	// in this test, are taken out of it before and after, under a lock against another run.
	cache := strings.TrimSpace(goEnv(t, goBin, "GOMODCACHE"))
	purge := func() {
		for _, d := range []string{filepath.Join(cache, "github.com", "sluice-go"), filepath.Join(cache, "cache", "download", "github.com", "sluice-go")} {
			require.NoError(t, os.RemoveAll(d))
		}
	}
	lock := lockFile(t, filepath.Join(os.TempDir(), "sluice-go-ratelimit-release.lock"))
	t.Cleanup(func() { purge(); lock() })
	purge()
	env := append(os.Environ(),
		"GOPROXY=file://"+proxy+","+strings.TrimSpace(goEnv(t, goBin, "GOPROXY")),
		"GOFLAGS=-mod=mod -modcacherw -buildvcs=false",
		"GONOSUMDB="+modulePath, "GONOSUMCHECK=1", "GOWORK=off",
		// The go command indexes a module version's files in the build cache once, trusting
		// versions never change; these are built afresh from a work tree on every run, so
		// another tree's v0.1.0 may be indexed there.
		"GODEBUG=goindex=0",
	)
	get := []string{"get"}
	for _, m := range published {
		get = append(get, strings.TrimSuffix(modulePath+"/"+m.dir, "/")+"@"+version)
	}
	run(t, user, env, goBin, get...)
	run(t, user, env, goBin, "build", "./...")
	list := run(t, user, env, goBin, "list", "-m", "-f", "{{.Path}} {{.Version}} {{if .Replace}}replaced{{end}}", "all")
	for _, m := range published {
		assert.Contains(t, list, strings.TrimSuffix(modulePath+"/"+m.dir, "/")+" "+version+" \n", "resolved at the release, not replaced")
	}
}

// releaseVersion is the version the published nested modules require the root at.
func releaseVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "prommetrics", "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(modulePath) + ` (v\S+)$`).FindSubmatch(data)
	require.NotNil(t, m, "prommetrics/go.mod requires the root")
	v := string(m[1])
	require.Regexp(t, `^v\d+\.\d+\.\d+$`, v, "a release version, not a pseudo-version or v0.0.0")
	require.NotEqual(t, "v0.0.0", v)
	return v
}

// writeModule writes the module in dir (relative to the repository's root) at version into
// the proxy's layout: @v/list, .info, .mod and .zip. The zip holds what git tracks, and
// what it would track, under dir, except the folders of other modules.
func writeModule(t *testing.T, proxy, dir, version string) {
	t.Helper()
	path := strings.TrimSuffix(modulePath+"/"+dir, "/")
	at := filepath.Join(proxy, filepath.FromSlash(path), "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	base := filepath.Join(root, filepath.FromSlash(dir))
	gomod, err := os.ReadFile(filepath.Join(base, "go.mod"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(at, "list"), []byte(version+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".info"), []byte(`{"Version":"`+version+`","Time":"2026-01-01T00:00:00Z"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".mod"), gomod, 0o644))

	files := moduleFiles(t, base)
	out, err := os.Create(filepath.Join(at, version+".zip"))
	require.NoError(t, err)
	zw := zip.NewWriter(out)
	for _, f := range files {
		w, err := zw.Create(path + "@" + version + "/" + f)
		require.NoError(t, err)
		data, err := os.ReadFile(filepath.Join(base, filepath.FromSlash(f)))
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, out.Close())
}

// moduleFiles lists the files of the module rooted at base, slash-separated and relative to
// it: those git tracks or would track (not ignored), outside any folder with a go.mod of
// its own.
func moduleFiles(t *testing.T, base string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "--", ".")
	cmd.Dir = base
	out, err := cmd.Output()
	require.NoError(t, err, "git ls-files")
	var nested []string
	var files []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := sc.Text()
		if d, ok := strings.CutSuffix(f, "/go.mod"); ok {
			nested = append(nested, d+"/")
		}
		files = append(files, f)
	}
	kept := files[:0]
	for _, f := range files {
		inner := false
		for _, n := range nested {
			inner = inner || strings.HasPrefix(f, n)
		}
		if _, err := os.Lstat(filepath.Join(base, filepath.FromSlash(f))); err != nil {
			continue // deleted in the work tree, not yet in the index
		}
		if !inner {
			kept = append(kept, f)
		}
	}
	require.Contains(t, kept, "go.mod")
	return kept
}

// lockFile takes an exclusive lock on the file at path, waiting for it, and returns its
// release.
func lockFile(t *testing.T, path string) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }
}

func goEnv(t *testing.T, goBin, name string) string {
	t.Helper()
	out, err := exec.Command(goBin, "env", name).Output()
	require.NoError(t, err)
	return string(out)
}

// run runs a command in dir and returns its output; a failure prints it.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s: %v", name, args[0], time.Since(start))
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}
