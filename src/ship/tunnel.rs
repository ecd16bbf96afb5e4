//! `rwb tunnel`: a public URL for the local server (serveo, ngrok, cloudflared, or a
//! configured command).
