//! placeholder: the handler lives here, main.rs stays thin
