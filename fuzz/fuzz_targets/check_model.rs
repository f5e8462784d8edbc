// Included by the fuzz target and by tests/transformer.rs: the path a model file takes.

/// Any bytes load as a model or give an error, never a panic or an abort; a model that loads and is small
/// runs a forward pass and cached steps that agree with it.
pub fn check_model_bytes(data: &[u8]) {
    use relattn::transformer::Transformer;
    let Ok(model) = Transformer::load(data, "input.safetensors") else { return };
    if model.parameters() > 1 << 16 {
        return;
    }
    let tokens = [0, 1 % model.config.vocab as u32];
    let logits = pollster::block_on(model.forward_async(&mut relattn::Backend::Cpu, &tokens)).expect("a loaded model runs");
    assert_eq!(logits.dim(), (2, model.config.vocab));
    let mut cache = model.cache();
    for &t in &tokens {
        let step = model.step(&mut cache, t).expect("a loaded model steps");
        assert!(step.iter().all(|v| v.is_finite()), "finite logits");
    }
}
