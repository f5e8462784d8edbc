//! Buffers: storage buffers by role, grown on demand and reused between computes, and the staging
//! buffer results are copied into and read back from (asynchronously: WebGPU has no blocking map).

use super::context::GpuContext;
use crate::error::gpu::GpuError;
use crate::error::Result;

impl GpuContext {
    /// A cached storage buffer of at least `bytes` bytes for `role`.
    pub(super) fn buffer(&mut self, role: &'static str, bytes: usize) -> wgpu::Buffer {
        let bytes = (bytes.max(16) as u64).next_multiple_of(16);
        if let Some(b) = self.buffers.get(role) {
            if b.size() >= bytes {
                return b.clone();
            }
        }
        let b = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(role),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.buffers.insert(role, b.clone());
        b
    }

    /// A cached storage buffer holding `data`.
    pub(super) fn upload<T: bytemuck::Pod>(&mut self, role: &'static str, data: &[T]) -> wgpu::Buffer {
        let b = self.buffer(role, std::mem::size_of_val(data));
        if !data.is_empty() {
            self.queue.write_buffer(&b, 0, bytemuck::cast_slice(data));
        }
        b
    }

    pub(super) fn encoder(&self) -> wgpu::CommandEncoder {
        self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("relattn") })
    }

    /// Waits until the device has done everything submitted so far.
    pub(super) async fn wait(&self) -> Result<()> {
        let (done, finished) = callback();
        self.queue.on_submitted_work_done(move || done(()));
        self.poll()?;
        finished.await;
        Ok(())
    }

    /// Natively, drives the device until everything submitted is done (callbacks included); the browser
    /// runs the device and its callbacks on its own.
    fn poll(&self) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| GpuError::Readback(e.to_string()))?;
        Ok(())
    }

    /// Submits `enc` after copying `parts` (buffer, f32 count) into the staging buffer, and reads them back.
    pub(super) async fn read(&mut self, enc: wgpu::CommandEncoder, parts: &[(&wgpu::Buffer, usize)]) -> Result<Vec<Vec<f32>>> {
        let mut out = vec![Vec::new(); parts.len()];
        self.read_into(enc, parts, |i, values| out[i] = values.to_vec()).await?;
        Ok(out)
    }

    /// [`GpuContext::read`] without copies of its own: `sink` is given each part's values (part index, values)
    /// straight from the mapped staging buffer, to copy where they belong.
    pub(super) async fn read_into(
        &mut self,
        mut enc: wgpu::CommandEncoder,
        parts: &[(&wgpu::Buffer, usize)],
        mut sink: impl FnMut(usize, &[f32]),
    ) -> Result<()> {
        let total: u64 = parts.iter().map(|(_, len)| (*len as u64 * 4).next_multiple_of(8)).sum::<u64>().max(8);
        if self.staging.as_ref().is_none_or(|s| s.size() < total) {
            self.staging = Some(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("staging"),
                size: total,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        let staging = self.staging.clone().expect("just made");
        let mut offset = 0;
        for (buf, len) in parts {
            let bytes = *len as u64 * 4;
            if bytes > 0 {
                enc.copy_buffer_to_buffer(buf, 0, &staging, offset, bytes);
            }
            offset += bytes.next_multiple_of(8);
        }
        self.queue.submit([enc.finish()]);
        self.map_read(&staging, total).await?;
        {
            let view = staging.slice(..total).get_mapped_range().map_err(|e| GpuError::Readback(e.to_string()))?;
            let mut offset = 0;
            for (i, (_, len)) in parts.iter().enumerate() {
                let bytes = &view[offset..offset + len * 4];
                // A mapped range is aligned to wgpu::MAP_ALIGNMENT (8 bytes) and every part starts at a multiple of 8.
                match bytemuck::try_cast_slice::<u8, f32>(bytes) {
                    Ok(values) => sink(i, values),
                    Err(_) => sink(i, &bytemuck::pod_collect_to_vec::<u8, f32>(bytes)),
                }
                offset += (len * 4).next_multiple_of(8);
            }
        }
        staging.unmap();
        Ok(())
    }

    /// Maps `bytes` of `buf` for reading and waits for it.
    async fn map_read(&self, buf: &wgpu::Buffer, bytes: u64) -> Result<()> {
        let (done, mapped) = callback();
        buf.slice(..bytes).map_async(wgpu::MapMode::Read, done);
        self.poll()?;
        mapped.await.map_err(|e| GpuError::Readback(e.to_string()).into())
    }
}

/// A one-shot callback for wgpu (which wants it `Send`) and the future that resolves with its argument.
fn callback<T: Send + 'static>() -> (impl FnOnce(T) + Send + 'static, impl std::future::Future<Output = T>) {
    use std::sync::{Arc, Mutex};
    use std::task::{Poll, Waker};
    let slot: Arc<Mutex<(Option<T>, Option<Waker>)>> = Arc::default();
    let done = slot.clone();
    let call = move |value: T| {
        let mut g = done.lock().expect("callback slot");
        g.0 = Some(value);
        if let Some(w) = g.1.take() {
            w.wake();
        }
    };
    let future = std::future::poll_fn(move |cx| {
        let mut g = slot.lock().expect("callback slot");
        match g.0.take() {
            Some(value) => Poll::Ready(value),
            None => {
                g.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    });
    (call, future)
}
