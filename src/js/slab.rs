//! The id-addressed tables the drivers keep their objects in (one per kind and thread).

/// Objects addressed by small ids from JS (runs, plans, semaphores); freed slots are reused.
pub(super) struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { items: Vec::new(), free: Vec::new() }
    }
}

impl<T> Slab<T> {
    pub(super) fn insert(&mut self, v: T) -> u32 {
        match self.free.pop() {
            Some(id) => {
                self.items[id as usize] = Some(v);
                id
            }
            None => {
                self.items.push(Some(v));
                (self.items.len() - 1) as u32
            }
        }
    }
    pub(super) fn remove(&mut self, id: u32) {
        drop(self.take(id));
    }
    pub(super) fn take(&mut self, id: u32) -> Option<T> {
        let v = self.items.get_mut(id as usize)?.take();
        if v.is_some() {
            self.free.push(id);
        }
        v
    }
    pub(super) fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        self.items.get_mut(id as usize).and_then(Option::as_mut)
    }
    pub(super) fn get(&self, id: u32) -> Option<&T> {
        self.items.get(id as usize).and_then(Option::as_ref)
    }
}
