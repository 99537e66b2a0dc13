// Builds the tests' precompiled header (tests_pch.h); the tests reuse it. No code of its own.
