# SPDX-License-Identifier: Apache-2.0
# Releases (issue 25, docs/install.md):
#   make release RELEASE_KEY=/path/to/release-ed25519-private.pem   signed release in dist/
#   make test-release     a throwaway-key release, checked (lintian, systemd-analyze, SBOM,
#                         verify-release, openssl), installed in a clean Debian 12 root, and
#                         built again elsewhere without ccache to prove it byte-identical
# The private key is read only from RELEASE_KEY, never from the tree; without it
# scripts/release.sh stops with one line that says how to give one.

RELEASE_OUT ?= dist
RELEASE_KEY ?=

.PHONY: release test-release

# $(error) prints one line and stops: no make noise after the message that says what to do.
release: bootstrap
	$(if $(RELEASE_KEY),,$(error no signing key: run make release RELEASE_KEY=/path/to/release-ed25519-private.pem (make a pair with: corral keygen --out DIR)))
	@scripts/release.sh --key "$(RELEASE_KEY)" --out $(RELEASE_OUT)

test-release: build
	@tests/release/run.sh $(BUILD)
