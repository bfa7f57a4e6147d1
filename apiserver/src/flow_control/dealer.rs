//! Shuffle sharding (upstream's `shufflesharding.Dealer`): a flow's hash value deals it a hand
//! of distinct queues out of the deck, the same hand every time, so that two flows rarely share
//! all their queues.

/// Upstream's largest hand (entropy of a 64-bit hash).
pub const MAX_HAND_SIZE: usize = 15;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dealer {
    deck: usize,
    hand: usize,
}

impl Dealer {
    /// None unless 1 <= hand <= deck and the hand fits in 64 bits of hash.
    pub fn new(deck: usize, hand: usize) -> Option<Self> {
        if hand == 0 || deck == 0 || hand > deck || hand > MAX_HAND_SIZE {
            return None;
        }
        // The hash must hold deck * (deck-1) * ... * (deck-hand+1) choices.
        let bits: f64 = (0..hand).map(|i| ((deck - i) as f64).log2()).sum();
        (bits <= 64.0).then_some(Self { deck, hand })
    }

    /// The hand's cards (queue indices), in dealing order: each draw takes the hash's next
    /// mixed-radix digit as an index among the cards not yet dealt.
    pub fn deal(&self, mut hash: u64) -> Vec<usize> {
        let mut remainders = [0usize; MAX_HAND_SIZE];
        for (i, slot) in remainders.iter_mut().enumerate().take(self.hand) {
            let radix = (self.deck - i) as u64;
            *slot = (hash % radix) as usize;
            hash /= radix;
        }
        (0..self.hand)
            .map(|i| {
                // Skip over the cards dealt before, as if they had left the deck.
                let mut card = remainders[i];
                for j in (1..=i).rev() {
                    if card >= remainders[j - 1] {
                        card += 1;
                    }
                }
                card
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn hands_are_distinct_cards_in_the_deck() {
        let dealer = Dealer::new(128, 6).expect("valid");
        for hash in [0u64, 1, 42, u64::MAX, 0xdead_beef_cafe_f00d] {
            let hand = dealer.deal(hash);
            assert_eq!(hand.len(), 6);
            assert!(hand.iter().all(|c| *c < 128));
            assert_eq!(hand.iter().collect::<HashSet<_>>().len(), 6, "{hand:?}");
            assert_eq!(hand, dealer.deal(hash), "deterministic");
        }
    }

    #[test]
    fn the_first_card_is_the_hash_modulo_the_deck() {
        let dealer = Dealer::new(10, 3).expect("valid");
        // 123 = 3 + 10 * (12 = 3 + 9 * (1 = 1 + 8 * 0)): digits 3, 3, 1.
        // Card 3; then 3 among the 9 left (0,1,2,4,..) is 4; then 1 among the rest is 1.
        assert_eq!(dealer.deal(123), vec![3, 4, 1]);
    }

    #[test]
    fn a_whole_deck_is_a_permutation() {
        let dealer = Dealer::new(5, 5).expect("valid");
        let mut hand = dealer.deal(987_654_321);
        hand.sort_unstable();
        assert_eq!(hand, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn impossible_hands_are_refused() {
        assert!(Dealer::new(4, 5).is_none());
        assert!(Dealer::new(4, 0).is_none());
        assert!(Dealer::new(1 << 20, 15).is_none(), "more than 64 bits");
        assert!(Dealer::new(128, 6).is_some());
    }
}
