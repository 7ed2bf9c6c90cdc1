//! The wire APIs, one folder each: how a request is written from a context (its messages in
//! the API's form, the body, the headers) and how the streamed answer is read back.

pub mod anthropic;
pub mod bedrock;
pub mod google;
pub mod mistral;
pub mod openai;
pub mod responses;
