//! Integration tests live in tests/tests/; filetests in tests/filetests/.
