# Thin wrapper around dev.sh / CMake (see README.md).
.PHONY: all build test test-asan test-tsan guard demo deps install clean
all: build
build:     ; ./dev.sh build
test:      ; ./dev.sh test
test-asan: ; ./dev.sh test-asan
test-tsan: ; ./dev.sh test-tsan
guard:     ; ./dev.sh guard
demo:      ; ./dev.sh demo
deps:      ; ./dev.sh deps
install: build ; cmake --install build
clean:     ; rm -rf build build-test build-asan build-tsan build-guard
