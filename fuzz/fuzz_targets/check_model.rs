// Included by the fuzz target and by tests/transformer.rs: the path a model file takes.

/// Any bytes load as a model or give an error, never a panic or an abort; a model that loads and is small
/// runs a forward pass with finite logits, or refuses with `Error::Overflow` when its finite weights leave
/// float32's range (the fuzzer found such models: weights near 1e30 make q·k infinite, or the logits), and a
/// model that runs steps its cache to finite logits too.
pub fn check_model_bytes(data: &[u8]) {
    use relattn::trained::transformer::Transformer;
    let Ok(model) = Transformer::load(data, "input.safetensors") else { return };
    if model.parameters() > 1 << 16 {
        return;
    }
    let tokens = [0, 1 % model.config.vocab as u32];
    let logits = match pollster::block_on(model.forward_async(&mut relattn::Backend::Cpu, &tokens)) {
        Ok(logits) => logits,
        Err(relattn::Error::Overflow { .. }) => return,
        Err(e) => panic!("a loaded model runs or overflows: {e}"),
    };
    assert_eq!(logits.dim(), (2, model.config.vocab));
    assert!(logits.iter().all(|v| v.is_finite()), "finite logits from the forward pass");
    let mut cache = model.cache(tokens.len());
    for &t in &tokens {
        let step = model.step(&mut cache, t).expect("a model whose forward pass runs steps");
        assert!(step.iter().all(|v| v.is_finite()), "finite logits");
    }
}
