//! The cycle-detection graph of clustering: one node per (partial) cluster, an edge wherever
//! a value flows from one cluster to another. Contracting an edge merges two clusters; it is
//! refused when another path between them exists, since the merged cluster would then both
//! feed and consume that path (a cycle). Built on petgraph's `StableDiGraph`, so node indices
//! stay valid as nodes are merged away.

use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::{EdgeFiltered, EdgeRef};
use petgraph::Direction;
use std::collections::VecDeque;

/// A directed acyclic graph whose edges can be contracted without creating cycles.
#[derive(Debug, Default)]
pub struct CycleGraph {
    g: StableDiGraph<(), ()>,
}

impl CycleGraph {
    /// A graph with `n` nodes (indices `0..n`) and no edges.
    pub fn with_nodes(n: usize) -> CycleGraph {
        let mut g = StableDiGraph::with_capacity(n, 0);
        for _ in 0..n {
            g.add_node(());
        }
        CycleGraph { g }
    }

    /// Adds `from -> to` unless present or a self-loop.
    pub fn add_edge(&mut self, from: usize, to: usize) {
        let (a, b): (NodeIndex, NodeIndex) = (NodeIndex::new(from), NodeIndex::new(to));
        if a != b && self.g.find_edge(a, b).is_none() {
            self.g.add_edge(a, b, ());
        }
    }

    /// Successors of a node, in a stable order.
    pub fn successors(&self, n: usize) -> Vec<usize> {
        let mut s: Vec<usize> = self
            .g
            .neighbors_directed(NodeIndex::new(n), Direction::Outgoing)
            .map(|i| i.index())
            .collect();
        s.sort_unstable();
        s
    }

    /// A path `from -> … -> to` that does not use the direct edge, if one exists: the reason
    /// contracting `from -> to` would create a cycle.
    pub fn other_path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let (a, b): (NodeIndex, NodeIndex) = (NodeIndex::new(from), NodeIndex::new(to));
        let view = EdgeFiltered::from_fn(&self.g, |e| !(e.source() == a && e.target() == b));
        // Breadth-first search with parents so the shortest such path can be shown.
        let mut parent = std::collections::HashMap::new();
        let mut queue = VecDeque::from([a]);
        parent.insert(a, a);
        while let Some(n) = queue.pop_front() {
            for e in
                petgraph::visit::IntoEdgesDirected::edges_directed(&view, n, Direction::Outgoing)
            {
                let m = e.target();
                if parent.contains_key(&m) {
                    continue;
                }
                parent.insert(m, n);
                if m == b {
                    let mut path = vec![b.index()];
                    let mut cur = b;
                    while cur != a {
                        cur = parent[&cur];
                        path.push(cur.index());
                    }
                    path.reverse();
                    return Some(path);
                }
                queue.push_back(m);
            }
        }
        None
    }

    /// Merges `to` into `from` (which survives) if no other path connects them; on refusal
    /// returns the path that would become a cycle.
    pub fn contract(&mut self, from: usize, to: usize) -> Result<(), Vec<usize>> {
        if let Some(path) = self.other_path(from, to) {
            return Err(path);
        }
        let (a, b): (NodeIndex, NodeIndex) = (NodeIndex::new(from), NodeIndex::new(to));
        let succ: Vec<NodeIndex> = self.g.neighbors_directed(b, Direction::Outgoing).collect();
        let pred: Vec<NodeIndex> = self.g.neighbors_directed(b, Direction::Incoming).collect();
        self.g.remove_node(b);
        for s in succ {
            self.add_edge(a.index(), s.index());
        }
        for p in pred {
            self.add_edge(p.index(), a.index());
        }
        Ok(())
    }

    /// True if the graph has no cycle (it never should).
    pub fn is_acyclic(&self) -> bool {
        !petgraph::algo::is_cyclic_directed(&self.g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diamond_through_an_outside_node_refuses() {
        // 0 -> 1 -> 3, 0 -> 2 -> 3: contracting 0 -> 3 is impossible, 0 -> 1 is fine.
        let mut g = CycleGraph::with_nodes(4);
        for (a, b) in [(0, 1), (1, 3), (0, 2), (2, 3), (0, 3)] {
            g.add_edge(a, b);
        }
        let path = g.contract(0, 3).unwrap_err();
        assert!(path == [0, 1, 3] || path == [0, 2, 3], "{path:?}");
        assert_eq!(g.contract(0, 1), Ok(()));
        assert_eq!(g.successors(0), vec![2, 3]);
        assert!(g.is_acyclic());
    }
}
