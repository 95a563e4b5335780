"""Nexmark events (Person, Auction, Bid) and their deterministic, index-addressable generator."""
