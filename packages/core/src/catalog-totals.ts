/**
 * What the registered catalogs add up to: their paths and bytes together (`maxTotalPaths`,
 * `maxTotalCatalogBytes`) and the clients of each remote address (`maxClientsPerAddress`). Pure
 * bookkeeping for the router: it asks before a catalog changes the registry, and reports each
 * change after.
 */
import { addressProblem, totalBytesProblem, totalPathsProblem, type CatalogLimits } from './catalog-limits.js';

/** A registered catalog as the totals count it. */
export interface Counted {
  /** Paths in the catalog. */
  readonly paths: number;
  /** Bytes of the client descriptor's JSON. */
  readonly bytes: number;
  /** The remote address its client counts against, if it counts. */
  readonly address: string | undefined;
}

type TotalLimits = Pick<CatalogLimits, 'maxTotalPaths' | 'maxTotalCatalogBytes' | 'maxClientsPerAddress'>;

export class CatalogTotals {
  /** Paths of every counted catalog. */
  paths = 0;
  /** Bytes of every counted catalog. */
  bytes = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(private readonly limits: TotalLimits) {}

  /**
   * Why a catalog of `paths` paths and `bytes` bytes may not replace `leaving` (the catalogs it
   * replaces; `undefined` for none), or `undefined` when it may. Not the catalog's fault: the
   * server is full.
   */
  fullProblem(paths: number, bytes: number, leaving: readonly (Counted | undefined)[]): string | undefined {
    let freeingPaths = 0;
    let freeingBytes = 0;
    for (const counted of leaving) {
      if (counted === undefined) continue;
      freeingPaths += counted.paths;
      freeingBytes += counted.bytes;
    }
    return (
      totalPathsProblem(this.paths, freeingPaths, paths, this.limits.maxTotalPaths) ??
      totalBytesProblem(this.bytes, freeingBytes, bytes, this.limits.maxTotalCatalogBytes)
    );
  }

  /**
   * Why one more client from `address` may not register, not counting `leaving` (the clients it
   * replaces), or `undefined` when it may. A client without an address is not counted.
   */
  addressProblem(address: string | undefined, leaving: readonly (Counted | undefined)[]): string | undefined {
    if (address === undefined) return undefined;
    let held = this.byAddress.get(address) ?? 0;
    for (const counted of leaving) if (counted !== undefined && counted.address === address) held--;
    return addressProblem(held, this.limits.maxClientsPerAddress);
  }

  /** Clients counted against `address` now. */
  clientsOf(address: string): number {
    return this.byAddress.get(address) ?? 0;
  }

  /** A catalog was registered. */
  add(counted: Counted): void {
    this.paths += counted.paths;
    this.bytes += counted.bytes;
    const { address } = counted;
    if (address !== undefined) this.byAddress.set(address, (this.byAddress.get(address) ?? 0) + 1);
  }

  /** A registered catalog was removed. Call once per {@link add}. */
  remove(counted: Counted): void {
    this.paths -= counted.paths;
    this.bytes -= counted.bytes;
    const { address } = counted;
    if (address === undefined) return;
    const held = this.byAddress.get(address) ?? 0;
    if (held <= 1) this.byAddress.delete(address);
    else this.byAddress.set(address, held - 1);
  }

  /** A client's catalog was replaced by another (its client, and so its address, stays). */
  replace(before: Counted, after: Counted): void {
    this.paths += after.paths - before.paths;
    this.bytes += after.bytes - before.bytes;
  }
}
