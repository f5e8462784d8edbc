//! PyTorch's fixtures of the trained models (tests/fixtures/chorales-*.safetensors, written by
//! train/export.py), read from the file's bytes: natively (relattn-cli's tests/transformer.rs) and in
//! wasm (relattn-wasm's tests/web_model.rs, which includes this file alone: the rest of `common` needs proptest).

use ndarray::ArrayD;

/// The array `name`: f32 as it is, int64 (tokens) as f32.
pub fn array(bytes: &[u8], name: &str) -> ArrayD<f32> {
    let st = safetensors::SafeTensors::deserialize(bytes).unwrap();
    let t = st.tensor(name).unwrap();
    let values: Vec<f32> = match t.dtype() {
        safetensors::Dtype::F32 => t.data().chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect(),
        safetensors::Dtype::I64 => t.data().chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap()) as f32).collect(),
        other => panic!("{name}: {other:?}"),
    };
    ArrayD::from_shape_vec(t.shape(), values).unwrap()
}

/// The metadata value of `key`.
pub fn meta(bytes: &[u8], key: &str) -> String {
    let (_, m) = safetensors::SafeTensors::read_metadata(bytes).unwrap();
    m.metadata().as_ref().unwrap()[key].clone()
}
